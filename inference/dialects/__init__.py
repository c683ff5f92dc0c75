"""One folder per inbound API (dialect): its routes, request reader, reply writer, error
shape and credentials, and its ``Dialect`` record. ``registry`` lists them: adding a
dialect is one folder and one line there."""
