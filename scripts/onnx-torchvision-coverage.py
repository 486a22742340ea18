#!/usr/bin/python3
"""Which torchvision classification models poet imports: exports each (structure only: the initializers keep their
dimensions, not their data) and runs `poet graph --onnx` on it, printing the model, PyTorch's trainable parameter
count, and poet's count or its first error.

A developer tool (Debian's python3-torch, python3-torchvision, python3-onnx).
Usage: scripts/onnx-torchvision-coverage.py POET_BINARY OUT_DIR [--opset N] [--training] [--no-constant-folding]
                                            [MODEL...]
  Without MODEL, every classification model torchvision lists (0.14: 80). --opset: 13 (default) to 17.
  --training: exported in training mode (TrainingMode.TRAINING: dropout and batch norm kept); otherwise in eval mode
  with batch norm kept (TrainingMode.PRESERVE).
  --no-constant-folding: torch.onnx.export's do_constant_folding=False, which keeps a learned table gathered by a
  constant index (Swin's and MaxViT's relative position bias) as the table; torch's folding replaces it by the
  gathered copy, a larger initializer that poet can only take for a parameter of its own.
"""
import argparse
import os
import re
import subprocess
import tempfile

import onnx
import torch
import torchvision


def classification_models():
    return torchvision.models.list_models(module=torchvision.models)


def export_structure(model, size, path, opset, training, fold):
    """Exports to `path` without the initializers' data (a model over 2 GB is written with external data first)."""
    with tempfile.TemporaryDirectory(dir=os.path.dirname(path)) as scratch:
        full = os.path.join(scratch, "model.onnx")
        mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.PRESERVE
        torch.onnx.export(model, torch.rand(1, 3, size, size), full, opset_version=opset, training=mode,
                          do_constant_folding=fold,
                          input_names=["input"], dynamic_axes={"input": {0: "batch"}})
        m = onnx.load(full, load_external_data=False)
    for t in m.graph.initializer:
        t.ClearField("raw_data")
        t.ClearField("float_data")
        t.ClearField("external_data")
        t.data_location = onnx.TensorProto.DEFAULT
    onnx.save(m, path)
    return len(m.graph.node)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("poet")
    parser.add_argument("out_dir")
    parser.add_argument("--opset", type=int, default=13)
    parser.add_argument("--training", action="store_true")
    parser.add_argument("--no-constant-folding", action="store_true")
    parser.add_argument("models", nargs="*")
    args = parser.parse_intermixed_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for name in args.models or classification_models():
        kwargs = {"aux_logits": False, "init_weights": False} if name in ("googlenet", "inception_v3") else {}
        model = torchvision.models.get_model(name, **kwargs).eval()
        size = 299 if name == "inception_v3" else 224
        path = os.path.join(args.out_dir, f"{name}_opset{args.opset}{'_train' if args.training else ''}.onnx")
        try:
            nodes = export_structure(model, size, path, args.opset, args.training, not args.no_constant_folding)
        except Exception as e:  # noqa: BLE001 - a model PyTorch cannot export is reported, not fatal
            print(f"{name:22s} export fails: {str(e).splitlines()[0][:150]}", flush=True)
            continue
        params = sum(p.numel() for p in model.parameters())
        r = subprocess.run([args.poet, "graph", "--onnx", path], capture_output=True, text=True)
        found = re.search(r"parameters\s+([\d,]+) trained", r.stdout)
        if r.returncode == 0 and found:
            ours = int(found.group(1).replace(",", ""))
            verdict = f"imports, parameters {ours:,} " + ("(equal)" if ours == params else "(DIFFER)")
        else:
            err = re.search(r"node '([^']*)' \((\w+)\): ([^;]*)", r.stderr)
            verdict = f"fails at {err.group(2)} ({err.group(3)[:120]})" if err else "fails: " + r.stderr.strip()[:200]
        print(f"{name:22s} {params:>12,}  {nodes:5d} nodes  {verdict}", flush=True)
        os.remove(path)


if __name__ == "__main__":
    main()
