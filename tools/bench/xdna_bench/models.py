"""The models a run measures: GGUF files the user gives, or models the project's generator makes."""

import os
import re
import subprocess
from dataclasses import dataclass

# Named sets of generated models (NAME:TYPE[:LAYERS]).
GEN_SETS = {
    "tiny": ["llama-tiny:Q4_0"],
    "small": ["qwen3-0.6b:Q4_0"],
    # the spec's dense models, with their real shapes (a CPU of 8 cores or more)
    "spec": ["qwen3-0.6b:Q4_0", "qwen2.5-0.5b:Q4_K_M", "llama-3.2-1b:Q4_K_M", "llama-3.2-3b:Q4_K_M"],
}

_GEN_RE = re.compile(r"^([A-Za-z0-9._-]+):([A-Za-z0-9_]+)(?::([0-9]+))?$")


class ModelError(ValueError):
    pass


@dataclass
class Model:
    label: str
    path: str


def parse_gen(spec):
    """NAME:TYPE[:LAYERS] -> (name, type, layers or None)."""
    m = _GEN_RE.match(spec)
    if not m:
        raise ModelError(f"'{spec}': a generated model is NAME:TYPE[:LAYERS], e.g. qwen3-0.6b:Q4_0 "
                         "(xdna-gen-model --list names them)")
    layers = int(m.group(3)) if m.group(3) else None
    if layers is not None and layers < 1:
        raise ModelError(f"'{spec}': the layer count must be at least 1")
    return m.group(1), m.group(2), layers


def gen_label(name, type_, layers):
    return f"{name} {type_}" + (f", {layers} layers" if layers else "") + " (generated)"


def file_model(path):
    if not os.path.isfile(path):
        raise ModelError(f"{path}: no such model file")
    return Model(os.path.basename(path).removesuffix(".gguf"), os.path.abspath(path))


def generate(spec, gen_model, llama_src, llama_bin):
    """Makes (or finds in the generator's cache) one generated model."""
    name, type_, layers = parse_gen(spec)
    if not gen_model or not os.access(gen_model, os.X_OK):
        raise ModelError(f"the model generator {gen_model or 'xdna-gen-model'} was not found (build the project, "
                         "or pass --gen-model)")
    cmd = [gen_model, "--model", name, "--type", type_]
    if layers:
        cmd += ["--layers", str(layers)]
    if llama_src:
        cmd += ["--llama-src", llama_src]
    if llama_bin:
        cmd += ["--llama-bin", llama_bin]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    out = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not out or not os.path.isfile(out[-1]):
        err = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise ModelError(f"xdna-gen-model could not make {spec}: {err}")
    return Model(gen_label(name, type_, layers), out[-1])


def resolve(files, gens, sets, gen_model, llama_src, llama_bin):
    """Every model to measure, in the order given: files, then generated models, then named sets."""
    specs = list(gens)
    for s in sets:
        if s not in GEN_SETS:
            raise ModelError(f"unknown model set '{s}' (known: {', '.join(GEN_SETS)})")
        specs += GEN_SETS[s]
    for s in specs:
        parse_gen(s)   # report a malformed spec before generating anything
    models = [file_model(f) for f in files]
    models += [generate(s, gen_model, llama_src, llama_bin) for s in specs]
    labels = set()
    for m in models:
        if m.label in labels:
            raise ModelError(f"model '{m.label}' is given twice")
        labels.add(m.label)
    return models
