"""The shared harness: registry, specs, checks, timing, ceilings, reports and the CLI."""
