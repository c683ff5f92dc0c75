"""One module per upstream wire format, mapping the neutral request, reply and events to
its HTTP calls; each declares the provider kinds it speaks, and ``registry`` derives the
rest (and holds one HTTP client per configured provider)."""
