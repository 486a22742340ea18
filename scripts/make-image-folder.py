#!/usr/bin/python3
"""Writes a folder of synthetic pictures in torchvision's ImageFolder layout (one
sub-folder per class), for poet's image-folder tests and its README demo.

A developer tool, not needed to build or test poet: it needs PIL (Debian's python3-pil),
and, for --expected, python3-torchvision, both in /usr/bin/python3.

Two classes a picture can tell apart at any size: "disc" (a light disc on a dark ground)
and "stripes" (light and dark horizontal bands), in random colours, positions and sizes,
saved in turn as RGB PNG, greyscale PNG, palette PNG, RGBA PNG, RGB JPEG and greyscale
JPEG, so that every decoding path is exercised. The same seed gives the same files.

--expected FILE also writes, for the first class's pictures (one of each kind of file), torchvision's
evaluation transform of them (Resize(8) + CenterCrop(8) + ToTensor + Normalize with
ImageNet's statistics): what poet's decoding and transform are held to.

Usage: scripts/make-image-folder.py OUT_DIR [--per-class N] [--size MIN MAX] [--seed S]
                                    [--expected FILE]
"""
import argparse
import json
import os
import random

from PIL import Image, ImageDraw

MODES = ["png-rgb", "png-grey", "png-palette", "png-rgba", "jpeg-rgb", "jpeg-grey"]


def picture(kind, width, height, rng):
    dark = tuple(rng.randrange(0, 90) for _ in range(3))
    light = tuple(rng.randrange(160, 256) for _ in range(3))
    im = Image.new("RGB", (width, height), dark)
    d = ImageDraw.Draw(im)
    if kind == "disc":
        r = rng.uniform(0.25, 0.4) * min(width, height)
        cx, cy = rng.uniform(r, width - r), rng.uniform(r, height - r)
        d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=light)
    else:
        band = max(1, height // rng.choice([4, 6, 8]))
        for y in range(rng.randrange(0, band), height, 2 * band):
            d.rectangle([0, y, width, y + band - 1], fill=light)
    return im


def save(im, path_stem, mode):
    if mode == "png-rgb":
        path = path_stem + ".png"
        im.save(path)
    elif mode == "png-grey":
        path = path_stem + ".png"
        im.convert("L").save(path)
    elif mode == "png-palette":
        path = path_stem + ".png"
        im.convert("P", palette=Image.ADAPTIVE, colors=16).save(path)
    elif mode == "png-rgba":
        path = path_stem + ".png"
        rgba = im.convert("RGBA")
        rgba.putalpha(200)
        rgba.save(path)
    elif mode == "jpeg-rgb":
        path = path_stem + ".jpg"
        im.save(path, quality=90)
    else:
        path = path_stem + ".jpg"
        im.convert("L").save(path, quality=90)
    return path


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--per-class", type=int, default=6)
    p.add_argument("--size", type=int, nargs=2, default=[12, 24])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--expected")
    a = p.parse_args()
    rng = random.Random(a.seed)
    written = {}
    for kind in ["disc", "stripes"]:
        os.makedirs(os.path.join(a.out, kind), exist_ok=True)
        for i in range(a.per_class):
            w, h = rng.randint(*a.size), rng.randint(*a.size)
            mode = MODES[i % len(MODES)]
            path = save(picture(kind, w, h, rng), os.path.join(a.out, kind, f"{i:03d}"), mode)
            written.setdefault(kind, []).append(path)
    if a.expected:
        import torchvision.transforms as T

        t = T.Compose([T.Resize(8), T.CenterCrop(8), T.ToTensor(),
                       T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
        expected = {}
        for path in written["disc"][:len(MODES)]:
            sample = t(Image.open(path).convert("RGB"))
            expected[os.path.relpath(path, a.out)] = [round(float(v), 3) for v in sample.flatten()]
        with open(a.expected, "w") as f:
            json.dump({"transform": "Resize(8), CenterCrop(8), ToTensor, Normalize(ImageNet)",
                       "samples": expected}, f)


if __name__ == "__main__":
    main()
