"""The container and model-file formats: packing, parsing and validating bytes (docs/format.md)."""
