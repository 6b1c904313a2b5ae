"""The ways out on the command line: ``python -m transformer inspect`` (main, inspect) and the JSON records
it and the pages' downloads write (export)."""
