"""The same dedup on Dask: ``pip install neardup[dask]``.

:func:`fingerprint` adds a ``fingerprint`` column to a dask DataFrame; :func:`dedup` finds the
near-duplicates of a corpus spread over many machines and keeps one document of each cluster,
with the same kept documents and the same evidence as :func:`neardup.dedup` on one machine, for
any number of partitions and workers. Every step runs on the workers, each a kernel of
:mod:`neardup.kernels` applied to one partition; the client receives a count per partition:

1. digests: each input partition's fingerprints, content keys, lengths and sketches (and the
   whole shingle sets of the texts whose sketch is cut, from the same pass), written to one
   Arrow file of a scratch folder (the input's one read before the outputs);
2. copies: the rows shuffled by content key; a text is the first row of its key and
   fingerprint, and its keep-order rank that of its first row in keep order;
3. candidates: one row per text and lead group of the search plan, shuffled by part key; the
   pairs of fingerprints within ``k`` of each part (each pair in one part only), and the pairs
   of texts of one fingerprint; the short texts' pairs by a shuffle on their prefix hashes
   (with prefix candidates, every text's, in a rarity order whose counts come to each
   partition for its own texts' hashes by two exchanges, one by hash and one back);
4. verification: every copy of a candidate pair goes, through the scratch folder, to the task of
   the partition of one of its two texts (the pair choosing which), so that each pair is checked
   once, however many tasks found it; the task reads its pairs' sketches where they lie, in the
   memory-mapped digest files (its own partition's, and the others' one at a time: no sketch
   moves); only the pairs kept leave it. A pair whose estimate lies near the threshold is
   decided on its exact shingle sets, which the digest wrote beside the sketches of the texts
   whose sketch is cut: read where they lie, no shuffle;
5. connected components of the verified pairs: in one task when they fit one partition of
   ``PAIR_ROWS`` rows, else by rounds of two shuffles (each node takes its neighbours' smallest
   label, then its label's label) until no label changes;
6. the stars of each component in keep order: the labels, the texts with copies and the pairs
   shuffled together by node (a text without copies reads its columns from its digest), then
   nodes and pairs by label; the tables of this stage and the last grow with the pairs, not the
   corpus, and take partitions of ``PAIR_ROWS`` rows;
7. the results of the rows concerned, partitioned like the input, and joined with it lazily by
   the kept rows and the clusters table.

The package holds one module a concept, in the order of the steps: :mod:`.digest` (steps 1
and 2, and :func:`fingerprint`), :mod:`.rarity` (the rarity order of prefix candidates),
:mod:`.candidates` (3), :mod:`.verification` (4), :mod:`.components` (5), :mod:`.stars` (6),
:mod:`.outputs` (7), :mod:`.frames` (the shuffles and joins they share), :mod:`.driver`
(:func:`dedup`, which runs them) and :mod:`.cluster` (:func:`local_cluster`, the client);
:mod:`.spill` and :mod:`.exchange` move the tables through the scratch folder, and
:mod:`.against` deduplicates against a dedup index.
"""

from __future__ import annotations

from .cluster import local_cluster
from .digest import fingerprint
from .driver import dedup

__all__ = ["dedup", "fingerprint", "local_cluster"]
