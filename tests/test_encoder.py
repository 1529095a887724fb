"""The ONNX Runtime encoders (fp32 and int8) against sentence-transformers on the packaged model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from agentmem.config import CorpusConfig, SizeConfig
from agentmem.corpus import write_corpus
from agentmem.embeddings import cache_subdir, embed_texts
from agentmem.encoder import (
    EncoderError,
    Int8OnnxEncoder,
    OnnxEncoder,
    TorchEncoder,
    export_onnx,
    get_encoder,
    int8_path,
    model_dir,
    quantize_onnx,
    usable_threads,
)

HOSTILE = [
    "",
    " ",
    "x" * 10_000,  # one word longer than WordPiece's 100 characters: a single [UNK]
    ("restart the relay " * 600)[:10_000],  # ~1,700 words: truncated at max_seq_length
    "🙂🚀 the deploy went fine ✅ ünïcödé",
    "nul\x00inside\x00",
    "  padded on both sides  ",
    "'; DROP TABLE memories; --",
    'NEAR(a b) * : "quoted"',
]


@pytest.fixture(scope="module")
def onnx_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fp32 export: a link to the session's (``$AGENTMEM_TEST_ONNX``), else exported here.

    A link in a directory of this module's own, so graphs derived beside it (the int8 one)
    stay here.
    """
    out = tmp_path_factory.mktemp("encoder") / "model.onnx"
    shared = os.environ.get("AGENTMEM_TEST_ONNX")
    if shared and Path(shared).is_file():
        out.symlink_to(Path(shared).resolve())
        return out
    return export_onnx(out)


@pytest.fixture(scope="module")
def encoders(onnx_model: Path) -> tuple[TorchEncoder, OnnxEncoder]:
    return TorchEncoder(), OnnxEncoder(onnx_model, threads=2)


@pytest.fixture(scope="module")
def corpus_texts(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Memory bodies and query texts of a generated corpus (80 facts), plus the hostile texts."""
    d = tmp_path_factory.mktemp("corpus")
    write_corpus(d, SizeConfig(facts=80, queries_per_class=4), CorpusConfig())
    mem = pl.read_parquet(d / "memories.parquet")["body"].to_list()
    qs = pl.read_parquet(d / "queries.parquet")["text"].to_list()
    return mem[:300] + qs + HOSTILE


def test_onnx_vectors_match_torch(encoders, corpus_texts):
    torch_enc, onnx_enc = encoders
    a = torch_enc.encode(corpus_texts, batch_size=64)
    b = onnx_enc.encode(corpus_texts, batch_size=64)
    assert a.shape == b.shape == (len(corpus_texts), 384)
    assert b.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    cos = (a * b).sum(axis=1)
    assert cos.min() >= 0.9999, [corpus_texts[i][:40] for i in np.argsort(cos)[:3]]
    # the hostile texts are in the same rows as their torch vectors (the length sort is undone)
    h = len(HOSTILE)
    assert ((a[-h:] * b[-h:]).sum(axis=1) >= 0.9999).all()
    # the batch size changes the padding, not the vectors
    c = onnx_enc.encode(corpus_texts[-h:], batch_size=1)
    assert ((c * b[-h:]).sum(axis=1) >= 0.99999).all()


def test_tokens_and_truncation_match_sentence_transformers(encoders):
    torch_enc, onnx_enc = encoders
    ours = onnx_enc.tokenize(HOSTILE)
    theirs = torch_enc.model.preprocess(HOSTILE)
    for key in ("input_ids", "attention_mask", "token_type_ids"):
        assert ours[key].tolist() == theirs[key].numpy().tolist(), key
    # the 10,000 characters of words are cut at max_seq_length (256) tokens, ending in [SEP]
    assert ours["input_ids"].shape == (len(HOSTILE), 256)
    assert ours["attention_mask"][3].sum() == 256 and ours["input_ids"][3, -1] == 102
    assert ours["attention_mask"][2].sum() == 3  # [CLS] [UNK] [SEP]
    assert ours["attention_mask"][0].sum() == 2  # "": [CLS] [SEP]


def test_the_batch_tokenizer_gives_transformers_arrays(encoders, corpus_texts):
    """Batches of 16 (uneven lengths, so padding), at both models' cuts and a short one."""
    from agentmem.encoder.base import load_tokenizer

    _, onnx_enc = encoders
    theirs = load_tokenizer(onnx_enc.spec)
    for max_length in (256, 128, 8):
        for i in range(0, len(corpus_texts), 16):
            batch = corpus_texts[i : i + 16]
            want = theirs(
                batch,
                padding=True,
                truncation="longest_first",
                max_length=max_length,
                return_tensors="np",
            )
            got = onnx_enc.tokenizer(batch, max_length)
            assert list(got) == ["input_ids", "attention_mask", "token_type_ids"]
            for key, arr in got.items():
                assert arr.dtype == np.int64, key
                assert arr.tolist() == want[key].tolist(), (max_length, i, key)
    assert onnx_enc.tokenizer([], 256)["input_ids"].shape == (0, 0)


def test_empty_input_gives_an_empty_matrix(encoders):
    for enc in encoders:
        assert enc.encode([]).shape == (0, 384)


def test_the_onnx_path_does_not_import_torch_nor_write_home(onnx_model, tmp_path):
    code = (
        "import sys\n"
        "from agentmem.embeddings import encode\n"
        f"v = encode(['a memory'], backend='onnx', onnx_model={str(onnx_model)!r})\n"
        "print(v.shape, 'torch' in sys.modules)\n"
    )
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    env.update(PYTHONPATH=str(Path(__file__).parents[1] / "src"), HOME=str(home))
    env.pop("XDG_CACHE_HOME", None)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[-2] == "(1, 384) False"
    # onnxruntime's device id / event database (~/.cache/Microsoft/...) is not written
    assert sorted(p.relative_to(home) for p in home.rglob("*")) == []


def test_a_vector_arms_recall_embeds_without_transformers(onnx_model, tmp_path):
    """``agentmem recall`` on a vector arm, beside the workflow's export, loads the ONNX
    encoder alone: neither torch nor transformers is imported (about 1 s of its wait)."""
    cache = tmp_path / "results/cache/encoder"
    cache.mkdir(parents=True)
    (cache / "all-MiniLM-L6-v2.onnx").symlink_to(onnx_model.resolve())
    code = (
        "import sys\n"
        "from agentmem.arms.factory import make_arm\n"
        "from agentmem.cli.common import text_embedding\n"
        "v = text_embedding(make_arm('file-vec'), 'a memory')\n"
        "print(v.shape, 'torch' in sys.modules, 'transformers' in sys.modules)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1] / "src"))
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[-2] == "(384,) False False"


def _model_copy(tmp_path: Path) -> Path:
    """The packaged model folder without its weights (the ONNX path reads only the rest)."""
    dst = tmp_path / "model"
    shutil.copytree(model_dir(), dst, ignore=shutil.ignore_patterns("*.safetensors"))
    return dst


def test_refuses_a_model_that_is_not_mean_pooling(tmp_path, onnx_model):
    d = _model_copy(tmp_path)
    cfg = json.loads((d / "1_Pooling" / "config.json").read_text())
    cfg.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    (d / "1_Pooling" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(EncoderError, match=r"mean pooling only.*pooling_mode_cls_token"):
        OnnxEncoder(onnx_model, folder=d)
    with pytest.raises(EncoderError, match="mean pooling only"):
        export_onnx(tmp_path / "never.onnx", folder=d)
    assert not (tmp_path / "never.onnx").exists()


def test_refuses_a_model_without_normalize(tmp_path, onnx_model):
    d = _model_copy(tmp_path)
    modules = json.loads((d / "modules.json").read_text())
    (d / "modules.json").write_text(
        json.dumps([m for m in modules if "Normalize" not in m["type"]])
    )
    with pytest.raises(
        EncoderError, match=r"Normalize modules, found \['Transformer', 'Pooling'\]"
    ):
        OnnxEncoder(onnx_model, folder=d)


def test_missing_model_and_bad_backend(tmp_path):
    with pytest.raises(EncoderError, match="does not exist; export it"):
        OnnxEncoder(tmp_path / "absent.onnx")
    with pytest.raises(ValueError, match="needs the exported model"):
        get_encoder("onnx")
    with pytest.raises(ValueError, match="unknown encoder backend 'tf'"):
        get_encoder("tf")  # type: ignore[arg-type]


def test_export_reuses_an_existing_file(onnx_model):
    before = onnx_model.stat()
    assert export_onnx(onnx_model) == onnx_model
    after = onnx_model.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_failed_export_leaves_nothing(tmp_path, monkeypatch):
    import torch

    def boom(*args, **kwargs):
        raise RuntimeError("export interrupted")

    monkeypatch.setattr(torch.onnx, "export", boom)
    out = tmp_path / "enc" / "model.onnx"
    with pytest.raises(RuntimeError, match="export interrupted"):
        export_onnx(out)
    assert list(out.parent.iterdir()) == []


def test_threads_are_capped_at_usable_cpus(onnx_model):
    cpus = len(os.sched_getaffinity(0))
    assert usable_threads(10_000) == cpus
    assert usable_threads(1) == 1 and usable_threads(0) == 1
    assert usable_threads(None) == cpus
    assert OnnxEncoder(onnx_model, threads=10_000).threads == cpus


def test_each_backend_has_its_own_cache(tmp_path, onnx_model):
    texts = ["the relay restarts nightly", "the build broke on Tuesday"]
    ids = ["a", "b"]
    cache = tmp_path / "cache"
    first = embed_texts(
        ids,
        texts,
        tmp_path / "o.parquet",
        cache,
        progress=False,
        backend="onnx",
        onnx_model=onnx_model,
    )
    assert first == {"texts": 2, "cached": 0, "encoded": 2}
    assert len(list(cache_subdir(cache, "onnx").glob("*.parquet"))) == 1
    # torch does not read the onnx vectors: it encodes both texts again, into its own directory
    second = embed_texts(ids, texts, tmp_path / "t.parquet", cache, progress=False)
    assert second == {"texts": 2, "cached": 0, "encoded": 2}
    assert len(list(cache_subdir(cache, "torch").glob("*.parquet"))) == 1
    assert sorted(p.name for p in cache.iterdir()) == ["onnx", "torch"]
    again = embed_texts(
        ids,
        texts,
        tmp_path / "o2.parquet",
        cache,
        progress=False,
        backend="onnx",
        onnx_model=onnx_model,
    )
    assert again == {"texts": 2, "cached": 2, "encoded": 0}
    with pytest.raises(ValueError, match="unknown encoder backend"):
        cache_subdir(cache, "tf")  # type: ignore[arg-type]


def test_the_second_model_encodes_offline_with_the_packaged_tokenizer(encoders):
    """paraphrase-MiniLM-L3-v2 from its package: unit 384-d vectors, its own space, 128 tokens."""
    from agentmem.encoder import PackagedOnnxEncoder

    enc = PackagedOnnxEncoder("paraphrase-MiniLM-L3-v2", threads=1)
    texts = [
        "The billing service times out after 30 seconds.",
        "billing-api has a thirty second timeout",
        "Alice owns the payments runbook.",
    ]
    v = enc.encode(texts)
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    sim = v @ v.T
    assert sim[0, 1] > sim[0, 2] + 0.2  # the paraphrase is nearer than the unrelated text
    # another model: the same text lands elsewhere than all-MiniLM-L6-v2 puts it
    base = encoders[1].encode(texts)
    assert float((v * base).sum(axis=1).max()) < 0.9
    # one batch and one text at a time agree (padding does not leak into the mean)
    one = np.stack([enc.encode([t])[0] for t in texts])
    assert np.allclose(one, v, atol=1e-5)
    assert enc.tokenize(["word " * 400])["input_ids"].shape[1] == 128
    with pytest.raises(EncoderError, match="unknown model 'nope'"):
        PackagedOnnxEncoder("nope")


def test_the_second_model_has_its_own_cache(tmp_path):
    assert cache_subdir(tmp_path, "onnx", "paraphrase-MiniLM-L3-v2") == (
        tmp_path / "paraphrase-MiniLM-L3-v2"
    )
    assert cache_subdir(tmp_path, "onnx", "all-MiniLM-L6-v2") == tmp_path / "onnx"
    with pytest.raises(ValueError, match="unknown model"):
        cache_subdir(tmp_path, "onnx", "nope")


def test_embed_texts_with_the_second_model_fills_its_own_cache(tmp_path):
    texts = ["The billing service times out after 30 seconds.", "Alice owns the runbook."]
    out = tmp_path / "emb.parquet"
    stats = embed_texts(["a", "b"], texts, out, tmp_path / "cache", model="paraphrase-MiniLM-L3-v2")
    assert stats == {"texts": 2, "cached": 0, "encoded": 2}
    assert len(list((tmp_path / "cache" / "paraphrase-MiniLM-L3-v2").glob("*.parquet"))) == 1
    assert not (tmp_path / "cache" / "onnx").exists()
    again = embed_texts(["a", "b"], texts, out, tmp_path / "cache", model="paraphrase-MiniLM-L3-v2")
    assert again["cached"] == 2
    vec = pl.read_parquet(out)["vector"].to_numpy()
    assert vec.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vec, axis=1), 1.0, atol=1e-5)


@pytest.fixture(scope="module")
def int8_encoder(onnx_model: Path) -> Int8OnnxEncoder:
    return Int8OnnxEncoder(onnx_model, threads=1)


def test_the_int8_graph_is_derived_from_the_fp32_export(onnx_model, int8_encoder):
    import onnx

    graph = int8_path(onnx_model)
    assert graph == onnx_model.with_name("model.int8.onnx") and graph.is_file()
    ops = [n.op_type for n in onnx.load(str(graph), load_external_data=False).graph.node]
    # the 36 weight products of the 6 layers are int8; the 12 attention products stay fp32
    assert ops.count("MatMulInteger") == 36 and ops.count("MatMul") == 12
    assert graph.stat().st_size < 0.7 * onnx_model.stat().st_size
    before = graph.stat()
    assert quantize_onnx(onnx_model) == graph  # reused, not derived again
    assert (graph.stat().st_ino, graph.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_int8_vectors_are_unit_and_near_the_fp32_ones(onnx_model, int8_encoder, corpus_texts):
    texts = corpus_texts[:24] + corpus_texts[-len(HOSTILE) :]
    fp32 = OnnxEncoder(onnx_model, threads=1).encode(texts, batch_size=16)
    int8 = int8_encoder.encode(texts, batch_size=16)
    assert int8.shape == (len(texts), 384) and int8.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)
    cos = (fp32 * int8).sum(axis=1)
    assert cos.min() >= 0.95, [texts[i][:40] for i in np.argsort(cos)[:3]]
    assert cos.max() < 0.99999  # a different graph: not the fp32 vectors themselves
    assert int8_encoder.backend == "onnx-int8"
    assert get_encoder("onnx-int8", str(onnx_model), 1).backend == "onnx-int8"
    with pytest.raises(ValueError, match="onnx-int8 encoder backend needs the exported model"):
        get_encoder("onnx-int8")


def test_quantising_a_missing_export_fails_and_leaves_nothing(tmp_path):
    with pytest.raises(EncoderError, match="does not exist; export it"):
        quantize_onnx(tmp_path / "absent.onnx")
    with pytest.raises(EncoderError, match="does not exist"):
        Int8OnnxEncoder(tmp_path / "absent.onnx")
    assert list(tmp_path.iterdir()) == []


def test_the_int8_backend_has_its_own_cache(tmp_path, onnx_model, int8_encoder):
    assert cache_subdir(tmp_path, "onnx-int8") == tmp_path / "onnx-int8"
    assert cache_subdir(tmp_path, "onnx-int8") != cache_subdir(tmp_path, "onnx")
    texts, ids = ["the relay restarts nightly", "the build broke on Tuesday"], ["a", "b"]
    cache = tmp_path / "cache"
    kw = {"progress": False, "onnx_model": onnx_model}
    first = embed_texts(ids, texts, tmp_path / "o.parquet", cache, backend="onnx", **kw)
    assert first["encoded"] == 2
    # the int8 backend does not read the fp32 vectors: it encodes both texts into its own dir
    second = embed_texts(ids, texts, tmp_path / "i.parquet", cache, backend="onnx-int8", **kw)
    assert second == {"texts": 2, "cached": 0, "encoded": 2}
    assert sorted(p.name for p in cache.iterdir()) == ["onnx", "onnx-int8"]
    again = embed_texts(ids, texts, tmp_path / "i2.parquet", cache, backend="onnx-int8", **kw)
    assert again == {"texts": 2, "cached": 2, "encoded": 0}
    a = pl.read_parquet(tmp_path / "o.parquet")["vector"].to_numpy()
    b = pl.read_parquet(tmp_path / "i.parquet")["vector"].to_numpy()
    assert not np.array_equal(a, b) and ((a * b).sum(axis=1) >= 0.95).all()
