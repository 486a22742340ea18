#!/usr/bin/python3
"""Which torchvision classification models poet imports: exports each (structure only, opset
13, eval mode with batch norm kept) and runs `poet graph --onnx` on it, printing the model,
PyTorch's trainable parameter count, and poet's count or its first error.

A developer tool (Debian's python3-torch, python3-torchvision, python3-onnx).
Usage: scripts/onnx-torchvision-coverage.py POET_BINARY OUT_DIR [MODEL...]
"""
import os
import re
import subprocess
import sys

import onnx
import torch
import torchvision

MODELS = ["alexnet", "vgg11", "vgg16", "vgg11_bn", "resnet18", "resnet34", "resnet50", "resnext50_32x4d",
          "wide_resnet50_2", "squeezenet1_0", "densenet121", "googlenet", "inception_v3", "shufflenet_v2_x1_0",
          "mobilenet_v2", "mobilenet_v3_small", "mnasnet1_0", "efficientnet_b0", "efficientnet_v2_s",
          "regnet_x_400mf", "regnet_y_400mf", "convnext_tiny", "vit_b_16", "swin_t"]


def main():
    poet, out_dir = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or MODELS
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        kwargs = {"aux_logits": False, "init_weights": False} if name in ("googlenet", "inception_v3") else {}
        model = getattr(torchvision.models, name)(**kwargs).eval()
        size = 299 if name == "inception_v3" else 224
        path = os.path.join(out_dir, name + ".onnx")
        torch.onnx.export(model, torch.rand(1, 3, size, size), path, opset_version=13,
                          training=torch.onnx.TrainingMode.PRESERVE)
        m = onnx.load(path)
        for t in m.graph.initializer:
            t.ClearField("raw_data")
        onnx.save(m, path)
        params = sum(p.numel() for p in model.parameters())
        r = subprocess.run([poet, "graph", "--onnx", path], capture_output=True, text=True)
        found = re.search(r"parameters\s+([\d,]+) trained", r.stdout)
        if r.returncode == 0 and found:
            ours = int(found.group(1).replace(",", ""))
            verdict = "imports, parameters " + ("equal" if ours == params else f"{ours:,} (differ)")
        else:
            err = re.search(r"node '([^']*)' \((\w+)\): ([^;]*)", r.stderr)
            verdict = f"fails at {err.group(2)} ({err.group(3)})" if err else "fails: " + r.stderr.strip()[:200]
        print(f"{name:22s} {params:>12,}  {verdict}", flush=True)


if __name__ == "__main__":
    main()
