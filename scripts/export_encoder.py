from agentmem.jobs import start_job

start_job(snakemake, background=False)  # the encoder jobs wait for it: full priority

# Rule export_encoder: export the encoder's transformer to ONNX (agentmem.encoder.export_onnx),
#   for the encoder jobs when embedding.backend is onnx or onnx-int8; no input.
# Rule quantize_encoder: derive the int8 graph (agentmem.encoder.quantize_onnx) from input[0],
#   the fp32 export, for embedding.backend onnx-int8.
# output[0] the .onnx file (written atomically)
import sys

if snakemake.input:
    from agentmem.encoder import quantize_onnx

    print(f"quantised {quantize_onnx(snakemake.input[0], snakemake.output[0])}", file=sys.stderr)
else:
    import torch

    from agentmem.encoder import export_onnx

    torch.set_num_threads(snakemake.threads)
    print(f"exported {export_onnx(snakemake.output[0])}", file=sys.stderr)
