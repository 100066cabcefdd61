"""A finished build's verdict, for the job API, ``graphboard verdict``, the demo and
graph_build's summary: the computation (``judge``), its JSON models (``models``), the first
error's worst metric under msprobe's rules (``worst_metric``) and the dtype-aware rules
(``rule_explain``), and the viewer URL that opens it (``url``)."""
