"""Review what a change does to a run: checked-in renders and the semantic diff of rendered objects.

`tau run --render` writes each target's client render to a file a repository checks in (and
`--check` gates it in CI); `tau run --diff` compares a target's objects between a Git revision and
the work tree, or between a submit and the live run. The comparison (`differ`) knows the shape
of Kubernetes objects; `report` turns it into text, a pull-request comment or JSON.
"""
