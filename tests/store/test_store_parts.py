"""The Store is its parts' methods over one shared connection: a public method added
to a part is the Store's too, bound to that part (a caller never needs to know which
part owns it)."""

from __future__ import annotations

import inspect

from app.store import Store
from app.store.archive import Archives
from app.store.judgements import Judgements
from app.store.liveness import Liveness
from app.store.notes import Notes
from app.store.queries import Queries
from app.store.scores import Scores
from app.store.transfer import Transfer
from app.store.writes import Writes

PARTS = (Writes, Scores, Queries, Judgements, Liveness, Archives, Transfer, Notes)


def test_every_public_method_of_a_part_is_the_stores() -> None:
    with Store.memory() as store:
        for part in PARTS:
            for name, member in vars(part).items():
                if name.startswith("_"):
                    continue
                where = f"{part.__name__}.{name}"
                if isinstance(member, property):
                    assert isinstance(getattr(Store, name, None), property), where
                elif inspect.isfunction(member):
                    bound = getattr(store, name, None)
                    assert inspect.ismethod(bound), where
                    assert bound.__func__ is member and isinstance(bound.__self__, part), where
