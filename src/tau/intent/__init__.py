"""The workload intent: find, load and validate tau.yaml; the schema, field reference, presets."""
