"""The compatibility matrix: :mod:`.model` (the dataclasses and queries), :mod:`.validate`, :mod:`.load`."""
