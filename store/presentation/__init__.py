"""How answers are shown to people: text tables and cells, ``explain``'s decision path, and
what an analytic fallback costs. Shared by the command line, the web view and the reports."""
