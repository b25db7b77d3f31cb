# Generated from wire/schemas/*.json by `python tests/wire/test_generated.py --write`: do not edit.
