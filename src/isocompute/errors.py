"""The one base class of IsoCompute's errors.

Each stage raises its own error (a bad config, a problem table, a fit that cannot run) from its own module,
and each also derives from the builtin it refines (`ValueError` for bad input, `RuntimeError` for a run
that must stop), so callers that catch those keep working. Deriving from `IsoComputeError` as well lets
the command line, a notebook or a wrapper tell the project's own refusals, which name the key, file or row
to fix, from a bug.
"""


class IsoComputeError(Exception):
    """An error IsoCompute raises on purpose: its message names what to fix."""


def plain(values: object) -> object:
    """Values as a message shows them: numpy scalars as Python numbers (pandas hands out numpy scalars, whose
    repr names their type, `np.int64(1280)`), lists and tuples element by element, sets sorted."""
    if isinstance(values, (set, frozenset)):
        return sorted(plain(v) for v in values)
    if isinstance(values, (list, tuple)):
        return type(values)(plain(v) for v in values)
    return values.item() if hasattr(values, "item") and not hasattr(values, "__len__") else values
