from agentmem.jobs import start_job

start_job(snakemake, background=False)  # the encoder jobs wait for it: full priority

# Export the encoder's transformer to ONNX (agentmem.encoder.export_onnx), for the encoder
# jobs when embedding.backend is onnx. output[0] the .onnx file (written atomically)
import sys

import torch

from agentmem.encoder import export_onnx

torch.set_num_threads(snakemake.threads)
print(f"exported {export_onnx(snakemake.output[0])}", file=sys.stderr)
