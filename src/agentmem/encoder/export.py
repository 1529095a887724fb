"""The fp32 ONNX export of the packaged model's transformer (the graph the ONNX encoders run)."""

from __future__ import annotations

from pathlib import Path

from agentmem.encoder.base import ONNX_INPUTS, ONNX_OPSET, load_tokenizer, model_spec


def export_onnx(out_path: str | Path, folder: str | Path | None = None) -> Path:
    """Export the model's transformer to ONNX at ``out_path`` (atomically); reuse an existing file.

    The transformer (``transformers.AutoModel`` of the model folder: the module
    sentence-transformers' first stage wraps; loading it alone skips importing
    sentence-transformers, whose import costs 7 s of CPU, and writes the same bytes) is
    traced with torch's TorchScript exporter (opset 17, batch and sequence axes dynamic),
    on two sentences the model's tokenizer (:func:`load_tokenizer`) pads, its forward taking
    ``input_ids``, ``attention_mask``, ``token_type_ids`` and returning
    ``last_hidden_state`` (b, s, 384); the graph is checked with ``onnx.checker`` before it
    is renamed onto ``out_path``, so a failed export leaves nothing behind.

    Args:
        out_path: the ``.onnx`` file (parents created); returned untouched when it exists.
        folder: the model folder; the packaged model for ``None``.

    Returns:
        ``out_path``.

    Raises:
        EncoderError: when the model is not one :class:`OnnxEncoder` reproduces.
    """
    from agentmem.io import atomic_path

    out = Path(out_path)
    if out.is_file():
        return out
    spec = model_spec(folder)
    import onnx
    import torch
    from transformers import AutoModel

    hf = AutoModel.from_pretrained(str(spec.path)).eval()

    class _LastHidden(torch.nn.Module):
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):  # noqa: ANN001, ANN202
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    sample = load_tokenizer(spec)(
        ["an example memory", "a second, longer example memory"], padding=True, return_tensors="pt"
    )
    axes = {name: {0: "batch", 1: "sequence"} for name in (*ONNX_INPUTS, "last_hidden_state")}
    with atomic_path(out) as tmp, torch.inference_mode():
        torch.onnx.export(
            _LastHidden(hf),
            tuple(sample[k] for k in ONNX_INPUTS),
            str(tmp),
            input_names=list(ONNX_INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=ONNX_OPSET,
            dynamo=False,
        )
        onnx.checker.check_model(str(tmp))
    return out
