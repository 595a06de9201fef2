"""``--draws``: how sure is the best configuration of a throughput search.

A draw is one "other world" in which every answer of the search is multiplied by an error
from its own distribution; the search is run again in it, K times, and the report says
which configurations won and what carries the winner's variance
(docs/adr/0008-decision-draws.md, 0111). The package is the mechanism, in four modules
imported only when a draw is asked for:

- ``spec``: what a draw is (``DrawSpec``: seed, index, ``FallbackErrors``), handed to every
  worker in the settings;
- ``errors``: the rule — an answer's identity, its error distribution and its multiplier in
  a draw, and a fallback's error from the analytic check;
- ``source``: in each process, the data source and fallback wrappers that apply the draw
  and record every op priced;
- ``report``: what the draws say.

``profstore.tensorcast.draw_search`` runs the K searches on top of ``commands`` (outside the
package, which the workers import).
"""
