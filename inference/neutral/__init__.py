"""The gateway's neutral terms: the request, reply and stream events every dialect reads
into and every provider maps from, its errors, and the readers every dialect shares. It
knows no dialect, no provider and no Django."""
