#!/usr/bin/python3
"""Which torchvision classification models poet imports, in eval and in training mode: exports each (structure only:
the initializers keep their dimensions, not their data) and runs `poet graph --onnx` on it, printing one row per
model, mode and opset: PyTorch's trainable parameter count, whether PyTorch exports it (or its error), and poet's
count or its first error; for each, how many BatchNormalization and Dropout nodes the file has and how many
batch_norm2d and dropout nodes poet's training graph has (poet's batch norm always normalises by the batch's
statistics and its dropout always drops, so an equal count means each came through as a training node; a Dropout of
ratio 0, which drops nothing, is no node in poet and is not counted in the file's), and the
times of PyTorch's export and poet's import.

A developer tool (Debian's python3-torch, python3-torchvision, python3-onnx).
Usage: scripts/onnx-torchvision-coverage.py POET_BINARY OUT_DIR [--opset N]... [--mode eval|training]...
                                            [--no-constant-folding] [MODEL...]
  Without MODEL, every classification model torchvision lists (0.14: 80), then `transformer_encoder`, a
  torch.nn.TransformerEncoder (6 layers, d_model 512, 8 heads, batch first) with a linear head on its first token.
  --opset (repeatable): 13 and 17 by default (any of 13 to 17). --mode (repeatable): eval and training by default;
  eval is TrainingMode.PRESERVE of the model in eval mode (batch norm kept, dropout left out), training is
  TrainingMode.TRAINING (batch norm normalising by the batch's statistics, dropout kept).
  --no-constant-folding: torch.onnx.export's do_constant_folding=False, which keeps a learned table gathered by a
  constant index (Swin's and MaxViT's relative position bias) as the table; torch's folding replaces it by the
  gathered copy, a larger initializer that poet can only take for a parameter of its own.
  --no-stochastic-depth: every StochasticDepth module's probability set to 0, as stochastic_depth_prob=0 builds them
  (ConvNeXt, EfficientNet, Swin, MaxViT), which PyTorch 1.13 cannot export in training mode otherwise (its stochastic
  depth draws with bernoulli).
Each model is built once and exported in every mode and opset asked for, one file at a time (deleted after its
import); the script runs nothing in parallel.
"""
import argparse
import collections
import gc
import json
import os
import re
import subprocess
import time

import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torchvision

EXPORT_BATCH = 2  # batch norm in training mode needs more than one value per channel; the batch axis is dynamic


class EncoderClassifier(nn.Module):
    """torch.nn.TransformerEncoder on [batch, 16 tokens, 512], classified from its first token."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 6)
        self.head = nn.Linear(512, 10)

    def forward(self, x):
        return self.head(self.encoder(x)[:, 0])


def make_model(name, no_stochastic_depth):
    """The model and the shape of one sample of its input."""
    if name == "transformer_encoder":
        return EncoderClassifier(), (16, 512)
    kwargs = {"aux_logits": False, "init_weights": False} if name in ("googlenet", "inception_v3") else {}
    size = 299 if name == "inception_v3" else 224
    model = torchvision.models.get_model(name, **kwargs)
    if no_stochastic_depth:  # as stochastic_depth_prob=0, which maxvit_t's builder does not take
        for m in model.modules():
            if isinstance(m, torchvision.ops.StochasticDepth):
                m.p = 0.0
    return model, (3, size, size)


def export_structure(model, sample, path, opset, training, fold):
    """Exports to `path` without the initializers' data; returns the file's node count per operator.

    torch.onnx.export with export_params=False, which writes no data: the initializers (the parameters, and what
    constant folding computed from them) come as graph inputs, which become initializers of their dimensions. The
    nodes and the initializers' names and dimensions are those of the default export (export_params=True) with
    its data cleared (compared on resnet50 in training mode, mobilenet_v3_small and a small Swin in eval mode);
    it is faster, the weights never serialized."""
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.PRESERVE
    model.train(training)
    torch.onnx.export(model, torch.rand(EXPORT_BATCH, *sample), path, opset_version=opset, training=mode,
                      do_constant_folding=fold, export_params=False, input_names=["input"],
                      dynamic_axes={"input": {0: "batch"}})
    m = onnx.load(path, load_external_data=False)
    inputs = list(m.graph.input)
    del m.graph.input[:]
    for v in inputs:
        if v.name == "input":
            m.graph.input.append(v)
            continue
        t = m.graph.initializer.add()
        t.name = v.name
        t.data_type = v.type.tensor_type.elem_type
        t.dims.extend(d.dim_value for d in v.type.tensor_type.shape.dim)
    onnx.save(m, path)
    ops = collections.Counter(n.op_type for n in m.graph.node)
    ops["Dropout of ratio 0"] = sum(dropout_ratio(m, n) == 0 for n in m.graph.node if n.op_type == "Dropout")
    return ops


def dropout_ratio(m, node):
    """The ratio of a Dropout node: its attribute (before opset 12) or its input, a Constant node's value."""
    for a in node.attribute:
        if a.name == "ratio":
            return a.f
    if len(node.input) > 1 and node.input[1]:
        for n in m.graph.node:
            if n.op_type == "Constant" and n.output[0] == node.input[1]:
                return float(onnx.numpy_helper.to_array(n.attribute[0].t))
    return 0.5


def poet_import(poet, path):
    """(verdict, poet's forward node count per operator or None, seconds)."""
    graph_json = path + ".graph.json"
    start = time.monotonic()
    r = subprocess.run([poet, "graph", "--onnx", path, "--json", graph_json], capture_output=True, text=True)
    seconds = time.monotonic() - start
    found = re.search(r"parameters\s+([\d,]+) trained", r.stdout)
    if r.returncode != 0 or not found:
        err = re.search(r"node '([^']*)' \((\w+)\): ([^;]*)", r.stderr)
        return (f"fails at {err.group(2)} ({err.group(3)[:120]})" if err else "fails: " + r.stderr.strip()[:200],
                None, seconds)
    with open(graph_json) as f:
        nodes = json.load(f)["nodes"]
    os.remove(graph_json)
    ops = collections.Counter(n["op"] for n in nodes if n["role"] != "backward")
    return int(found.group(1).replace(",", "")), ops, seconds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("poet")
    parser.add_argument("out_dir")
    parser.add_argument("--opset", type=int, action="append")
    parser.add_argument("--mode", choices=["eval", "training"], action="append")
    parser.add_argument("--no-constant-folding", action="store_true")
    parser.add_argument("--no-stochastic-depth", action="store_true")
    parser.add_argument("models", nargs="*")
    args = parser.parse_intermixed_args()
    os.makedirs(args.out_dir, exist_ok=True)
    names = args.models or torchvision.models.list_models(module=torchvision.models) + ["transformer_encoder"]
    print(f"{'model':22s} {'mode':8s} {'opset':>5s} {'PyTorch':>12s} {'nodes':>6s} {'export':>7s} {'import':>7s}  "
          "BN file/poet  Dropout (ratio > 0) file/poet  poet", flush=True)
    for name in names:
        model, sample = make_model(name, args.no_stochastic_depth)
        params = sum(p.numel() for p in model.parameters())
        for mode in args.mode or ["eval", "training"]:
            for opset in args.opset or [13, 17]:
                row = f"{name:22s} {mode:8s} {opset:5d} {params:>12,}"
                path = os.path.join(args.out_dir, f"{name}_opset{opset}_{mode}.onnx")
                start = time.monotonic()
                try:
                    ops = export_structure(model, sample, path, opset, mode == "training",
                                           not args.no_constant_folding)
                except Exception as e:  # noqa: BLE001 - a model PyTorch cannot export is reported, not fatal
                    print(f"{row} PyTorch's export fails: {str(e).splitlines()[0][:150]}", flush=True)
                    continue
                export_s = time.monotonic() - start
                ours, poet_ops, import_s = poet_import(args.poet, path)
                os.remove(path)
                row += f" {sum(ops.values()):6d} {export_s:6.1f}s {import_s:6.1f}s"
                if poet_ops is None:
                    dropout = ops['Dropout'] - ops['Dropout of ratio 0']
                    print(f"{row}  {ops['BatchNormalization']:4d}/-  {dropout:4d}/-  {ours}", flush=True)
                    continue
                verdict = f"imports, parameters {ours:,} " + ("(equal)" if ours == params else "(DIFFER)")
                dropout = ops['Dropout'] - ops['Dropout of ratio 0']
                print(f"{row}  {ops['BatchNormalization']:4d}/{poet_ops['batch_norm2d']:<4d}"
                      f"  {dropout:4d}/{poet_ops['dropout']:<4d}  {verdict}", flush=True)
        del model
        gc.collect()


if __name__ == "__main__":
    main()
