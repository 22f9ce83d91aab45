"""One model built at a time per process: :data:`BUILD_LOCK`.

Two things are process-wide while a model is built:

- transformers 5.23's ``from_pretrained`` replaces torch's weight initialisers with no-ops and builds the
  weights it will read on the meta device while it runs: a model built in another thread at that moment came out
  with meta tensors ("Cannot copy out of meta tensor", seen in CI when the server's background load of MiniLM
  met a page loading a captioner), or, for one of our own models, with its initialisation skipped;
- torch's global random generator, which a seeded build (our models' ``make_model``, the seeded tiny GPT-2) sets
  and draws from: two seeded builds at once would each get some of the other's numbers.

So every engine build holds this lock: Hugging Face loads (``engine.families.hub``), the seeded tiny GPT-2,
and our own models' seeded builds (``engine.training``: Train live's jobs, the recipes, induction heads, the
order-blindness check). It is not re-entrant: nothing built under it builds another model.
"""

from __future__ import annotations

import threading

BUILD_LOCK = threading.Lock()
