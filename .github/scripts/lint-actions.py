#!/usr/bin/env python3
"""Lint composite actions with actionlint.

actionlint lints workflows; an action.yml given to it alone is read as a broken workflow, and
a workflow that uses a local action checks only the inputs passed to it. So each composite
action's steps are wrapped in a one-job workflow (its inputs become workflow_call inputs) and
fed to actionlint on stdin: expressions, action inputs and, through shellcheck, every `run:`
script are checked as they would be in a workflow. The action's own metadata is checked here.

Usage: lint-actions.py [ACTION_YML...]   (default: .github/actions/*/action.yml)
Exit status: 0 clean, 1 findings.
"""

import glob
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
    for name, spec in (action.get("outputs") or {}).items():
        if not isinstance(spec, dict) or "value" not in spec:
            problems.append(f"{path}: output {name!r} of a composite action needs a value")
    runs = action.get("runs") or {}
    if runs.get("using") != "composite":
        problems.append(f"{path}: runs.using is {runs.get('using')!r}; only composite is linted")
    for i, step in enumerate(runs.get("steps") or []):
        if "run" in step and "shell" not in step:
            problems.append(f"{path}: step {i + 1} runs a script without 'shell:'")
    return problems


class _Dumper(yaml.SafeDumper):
    """Writes multi-line strings as literal blocks, so findings quote readable scripts."""


_Dumper.add_representer(
    str,
    lambda dumper, text: dumper.represent_scalar(
        "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None
    ),
)


def as_workflow(action):
    inputs = {
        name: {"type": "string", "required": False, "description": spec.get("description", "")}
        for name, spec in (action.get("inputs") or {}).items()
    }
    return {
        "name": f"composite action {action.get('name', '')}",
        "on": {"workflow_call": {"inputs": inputs}} if inputs else {"workflow_call": None},
        "jobs": {
            "action": {
                "runs-on": "ubuntu-24.04",
                "steps": action["runs"]["steps"],
            }
        },
    }


def main(paths):
    paths = paths or sorted(glob.glob(".github/actions/*/action.yml"))
    failed = False
    for path in paths:
        with open(path, encoding="utf-8") as f:
            try:
                action = yaml.safe_load(f)
            except yaml.YAMLError as e:
                print(f"{path}: not valid YAML: {e}")
                failed = True
                continue
        problems = metadata_problems(path, action)
        for p in problems:
            print(p)
        if problems:
            failed = True
            continue
        workflow = yaml.dump(as_workflow(action), Dumper=_Dumper, sort_keys=False, width=1000)
        lint = subprocess.run(
            ["actionlint", "-no-color", "-stdin-filename", f"{path} (steps as a workflow)", "-"],
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
