"""Skills (Anthropic's Agent Skills format, docs/skills.md): folders of instructions an
agent's model loads when a task needs them. ``catalog`` finds them under ``skills.dir``;
``reading`` lists and reads the files of one, never outside its folder."""
