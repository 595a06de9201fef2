"""One lookup from leaf to result: dispatch, the base exact lookup, running a capability path
over its candidates, formats a leaf does not state, communication, and the nearest regime."""
