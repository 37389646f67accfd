"""``python -m gpunda``: the help of the command line and of each subcommand."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("command", ["demo", "inspect", "info", "run", "im2rec", "export-onnx",
                                     "nvrtc-check"])
def test_every_subcommand_help_gives_each_option_meaning_and_default(command):
    r = subprocess.run([sys.executable, "-m", "gpunda", command, "--help"], capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"usage: python -m gpunda {command}")
    # each option's help block (from its flag up to the next one) says what it does
    # and, unless it is --help or a required input, what it is by default
    blocks = re.split(r"\n  (?=-)", r.stdout.split("options:", 1)[1])[1:]
    for block in blocks:
        flag, _, text = block.strip().partition(" ")
        assert len(text.split()) >= 3, (command, block)
        if not flag.startswith(("-h", "--help")):
            assert "default" in text, (command, block)
    positional = r.stdout.split("positional arguments:")[1].split("options:")[0] \
        if "positional arguments:" in r.stdout else ""
    for line in positional.strip().splitlines():
        if not line.startswith("    "):
            name, _, text = line.strip().partition(" ")
            assert text.strip(), (command, name)      # every positional is explained


def test_top_level_help_lists_every_command():
    r = subprocess.run([sys.executable, "-m", "gpunda", "--help"], capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert r.returncode == 0
    for command in ("info", "demo", "inspect", "run", "im2rec", "export-onnx", "nvrtc-check"):
        assert f"{command}:" in r.stdout
