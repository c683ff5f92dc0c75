"""Evaluations (docs/evaluations.md): an agent's or experiment's recorded turns replayed
through candidate agents and judged, to tell whether another agent (a cheaper model, a
new preamble) answers the users' real conversations as well.

``spec`` checks what is asked against the config; ``cases`` reads the recorded turns;
``replay`` and ``judging`` make one candidate's and one judge's conversation; ``runner``
paces them, stores what they said and charges what they cost; ``tasks`` runs evaluations
in the background of the process; ``records`` and ``summary`` read them back.
"""
