#!/usr/bin/env python3
"""Lint composite actions with actionlint.

actionlint lints workflows; an action.yml given to it alone is read as a broken workflow, and
a workflow that uses a local action checks only the inputs passed to it. So each composite
action's steps are wrapped in a one-job workflow (its inputs become workflow_call inputs) and
fed to actionlint on stdin: expressions, action inputs and, through shellcheck, every `run:`
script are checked as they would be in a workflow. The wrapper is the action.yml's own text,
line for line (the header commented out, the steps indented two more), so every finding
names a line of the action.yml itself. The action's own metadata, including that every
output's value points at a step that exists and writes that output, is checked here.

Usage: lint-actions.py [ACTION_YML...]   (default: .github/actions/*/action.yml)
Exit status: 0 clean, 1 findings.
"""

import glob
import json
import re
import subprocess
import sys

import yaml

REQUIRED_KEYS = ("name", "description", "runs")


def metadata_problems(path, action):
    problems = []
    if not isinstance(action, dict):
        return [f"{path}: not a YAML mapping"]
    for key in REQUIRED_KEYS:
        if key not in action:
            problems.append(f"{path}: no top-level {key!r}")
    for name, spec in (action.get("inputs") or {}).items():
        if not isinstance(spec, dict) or not spec.get("description"):
            problems.append(f"{path}: input {name!r} has no description")
    runs = action.get("runs") or {}
    if runs.get("using") != "composite":
        problems.append(f"{path}: runs.using is {runs.get('using')!r}; only composite is linted")
    steps = runs.get("steps") or []
    for i, step in enumerate(steps):
        if "run" in step and "shell" not in step:
            problems.append(f"{path}: step {i + 1} runs a script without 'shell:'")
    by_id = {step["id"]: step for step in steps if isinstance(step, dict) and "id" in step}
    for name, spec in (action.get("outputs") or {}).items():
        if not isinstance(spec, dict) or "value" not in spec:
            problems.append(f"{path}: output {name!r} of a composite action needs a value")
            continue
        problems += output_problems(path, name, str(spec["value"]), by_id)
    return problems


def output_problems(path, name, value, by_id):
    """An output's value must read steps.<id>.outputs.<key> of a step that exists; a `run:`
    step must write that key (`key=` in its script), or the output is always empty."""
    refs = re.findall(r"steps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)", value)
    if not refs:
        return [f"{path}: output {name!r} reads no step output: {value!r}"]
    problems = []
    for step_id, key in refs:
        step = by_id.get(step_id)
        if step is None:
            problems.append(f"{path}: output {name!r} reads step {step_id!r}, which no step has as id")
        elif "run" in step and f"{key}=" not in step["run"]:
            problems.append(
                f"{path}: output {name!r} reads steps.{step_id}.outputs.{key}, "
                f"which step {step_id!r} never writes to $GITHUB_OUTPUT"
            )
    return problems


def as_workflow(text, action):
    """The action.yml's text as a workflow with the same line numbers: line 1 names it, line 2
    holds the `on:` (inputs as workflow_call inputs, in flow style), the rest of the header is
    commented out, `jobs:` / `action:` / `runs-on:` / `steps:` take the place of the line
    before `runs:`, `runs:`, `using:` and `steps:`, and the steps are indented two more."""
    inputs = {
        name: {"type": "string", "required": False, "description": spec.get("description", "")}
        for name, spec in (action.get("inputs") or {}).items()
    }
    on = {"workflow_call": {"inputs": inputs} if inputs else None}
    lines = text.split("\n")
    runs_at = next((i for i, line in enumerate(lines) if line.rstrip() == "runs:"), None)
    if runs_at is None or runs_at < 3:
        raise ValueError("no top-level 'runs:' after the name and description")
    out = [f"# {line}" if line else "" for line in lines]
    out[0] = f"name: {json.dumps('composite action ' + str(action.get('name', '')))}"
    out[1] = f"on: {json.dumps(on)}"
    out[runs_at - 1] = "jobs:"
    out[runs_at] = "  action:"
    for i in range(runs_at + 1, len(lines)):
        line = lines[i]
        if line and not line.startswith(" ") and not line.startswith("#"):
            break  # the next top-level key (branding, say) stays commented out
        if re.match(r"^  using:", line):
            out[i] = "    runs-on: ubuntu-24.04"
        elif line.startswith("  ") and not line.startswith("   ") and not line.strip().startswith("#"):
            if line.rstrip() != "  steps:":
                raise ValueError(f"line {i + 1}: only using and steps are expected under runs")
            out[i] = "    steps:"
        else:
            out[i] = f"  {line}" if line else ""
    return "\n".join(out)


def main(paths):
    paths = paths or sorted(glob.glob(".github/actions/*/action.yml"))
    failed = False
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            action = yaml.safe_load(text)
        except yaml.YAMLError as e:
            print(f"{path}: not valid YAML: {e}")
            failed = True
            continue
        problems = metadata_problems(path, action)
        try:
            workflow = as_workflow(text, action)
        except ValueError as e:
            problems.append(f"{path}: {e}")
        for p in problems:
            print(p)
        if problems:
            failed = True
            continue
        # The wrapper must read back as the same steps, or a finding's line would be wrong.
        wrapped = yaml.safe_load(workflow)
        if wrapped["jobs"]["action"]["steps"] != action["runs"]["steps"]:
            print(f"{path}: internal: the wrapped steps differ from the action's")
            failed = True
            continue
        lint = subprocess.run(
            ["actionlint", "-no-color", "-stdin-filename", path, "-"],
            input=workflow,
            text=True,
            check=False,
        )
        if lint.returncode != 0:
            failed = True
        else:
            print(f"{path}: ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
