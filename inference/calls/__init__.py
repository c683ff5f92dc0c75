"""A conversation's calls: the layers of the model-call seam built in one place
(``factory``), the conversation that makes them for a caller (``conversation``: the tool
loop, the agent's own tools, subagents), what a turn's calls did (``recorder``), and
asking an agent something for a caller in one call (``asking``)."""
