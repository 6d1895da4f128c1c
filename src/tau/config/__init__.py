"""The config stage: find, load and validate tau.yaml; the schema, field reference, presets."""
