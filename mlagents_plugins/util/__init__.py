"""Small utilities with no ML-Agents or torch dependency: durable renames, command-line number types,
process lifetime helpers."""
