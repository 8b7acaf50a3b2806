"""Configurations: named sets of environment assignments, the same binaries throughout.

A configuration is given on the command line as

    NAME                 a preset (see PRESETS, plus shareX for a fixed NPU share X)
    NAME=                no assignments: the plugin with its defaults
    NAME=K=V[,K=V...]    the plugin with these variables set

GGML_BACKEND_PATH= (empty) in a configuration runs the stock llama.cpp without the plugin.
"""

import re
from dataclasses import dataclass, field

# The spec's table of configurations, by name. Each: (assignments, what it is).
PRESETS = {
    "stock": ({"GGML_BACKEND_PATH": ""}, "stock llama.cpp, the plugin not loaded"),
    "cpu": ({"GGML_XDNA_MIN_BATCH": "1000000"}, "CPU alone: the plugin loaded but claiming nothing"),
    "default": ({}, "the plugin with its defaults"),
    "w8": ({"GGML_XDNA_NPU_W8": "1"}, "int8 NPU weights"),
    "decode": ({"GGML_XDNA_NPU_DECODE": "1"}, "experimental NPU token generation"),
    "no-npu": ({"GGML_XDNA_NPU": "off"}, "the plugin without its NPU worker"),
    "gpu-off": ({"GGML_XDNA_GPU": "none"}, "the plugin without its GPU worker"),
}

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_VAR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SHARE_RE = re.compile(r"^share(.+)$")


class ConfigError(ValueError):
    """A configuration the user gave cannot be used; the message says why in one line."""


@dataclass
class Config:
    name: str
    env: dict = field(default_factory=dict)   # assignments, in the order given
    about: str = ""

    def describe_env(self):
        """The assignments as the user would type them (empty: none)."""
        return " ".join(f"{k}={v}" for k, v in self.env.items())

    def loads_plugin(self):
        return self.env.get("GGML_BACKEND_PATH", None) != ""


def _share_preset(value):
    if value == "auto":
        return {"GGML_XDNA_NPU_SHARE": "auto"}
    try:
        x = float(value)
    except ValueError:
        return None
    if not 0.0 <= x <= 1.0:
        raise ConfigError(f"share{value}: the NPU share must be between 0 and 1")
    return {"GGML_XDNA_NPU_SHARE": value}


def parse_config(spec):
    """Parses one configuration given on the command line (see the module's docstring)."""
    if "=" not in spec:
        name = spec
        if not _NAME_RE.match(name):
            raise ConfigError(f"'{spec}': a configuration name may only hold letters, digits and . _ + -")
        if name in PRESETS:
            env, about = PRESETS[name]
            return Config(name, dict(env), about)
        m = _SHARE_RE.match(name)
        env = _share_preset(m.group(1)) if m else None
        if env is None:
            known = ", ".join(sorted(PRESETS)) + ", shareX (0 <= X <= 1, or shareauto)"
            raise ConfigError(f"'{spec}' is not a preset ({known}); write NAME=K=V,... for your own")
        return Config(name, env, f"a fixed NPU share of {m.group(1)}")

    name, _, rest = spec.partition("=")
    if not name or not _NAME_RE.match(name):
        raise ConfigError(f"'{spec}': the configuration needs a name (letters, digits, . _ + -) before the first '='")
    env = {}
    if rest.strip():
        for part in rest.split(","):
            part = part.strip()
            key, eq, value = part.partition("=")
            if not eq or not _VAR_RE.match(key):
                raise ConfigError(f"'{spec}': '{part}' is not a VARIABLE=VALUE assignment")
            if key in env:
                raise ConfigError(f"'{spec}': {key} is assigned twice")
            env[key] = value
    return Config(name, env, "")


def parse_configs(specs):
    """Parses the configurations in order; names must be unique."""
    configs = [parse_config(s) for s in specs]
    seen = set()
    for c in configs:
        if c.name in seen:
            raise ConfigError(f"configuration '{c.name}' is given twice")
        seen.add(c.name)
    if not configs:
        raise ConfigError("no configuration to run")
    return configs


def parse_assignment(text):
    """One K=V for --env."""
    key, eq, value = text.partition("=")
    if not eq or not _VAR_RE.match(key):
        raise ConfigError(f"'{text}' is not a VARIABLE=VALUE assignment")
    return key, value


def run_env(base, config, plugin, common=None, report_path=None):
    """The environment one run gets.

    The caller's GGML_XDNA_* variables are dropped (a stray setting in the shell would otherwise turn every
    configuration into something else); everything else is kept, XDNA_EMU_* included, since it describes the
    machine every configuration runs on. Then the plugin, the common assignments and the configuration's own.
    """
    env = {k: v for k, v in base.items() if not k.startswith("GGML_XDNA_")}
    env.pop("GGML_BACKEND_PATH", None)
    if plugin:
        env["GGML_BACKEND_PATH"] = plugin
    env.update(common or {})
    env.update(config.env)
    if env.get("GGML_BACKEND_PATH", None) == "":
        del env["GGML_BACKEND_PATH"]
    if report_path and "GGML_XDNA_REPORT" not in config.env:
        env["GGML_XDNA_REPORT"] = report_path
    return env


def ignored_vars(base):
    """The caller's GGML_XDNA_* variables that run_env drops, for a note to the user."""
    return sorted(k for k in base if k.startswith("GGML_XDNA_"))


def is_true(value):
    return str(value).strip().lower() in ("1", "on", "true", "yes")
