"""Managed workflows: schema_version 1 manifests, translated onto the typed run config."""
