"""How the client scripts check what they expect: an explicit test that
raises, which `python -O` keeps. `-O` removes every `assert` statement, and
a script whose checks were gone would still print its ok line and pass
(tests/clients.rs runs each script under -O, and fails on any `assert` in
them)."""


class Mismatch(Exception):
    """What a client saw is not what the docs promise its users."""


def expect(condition: object, *detail: object) -> None:
    """Raises Mismatch, with `detail` (what was seen), unless `condition` holds."""
    if not condition:
        raise Mismatch(*detail) if detail else Mismatch("expectation failed")
