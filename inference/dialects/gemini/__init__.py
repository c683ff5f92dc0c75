"""Google's Gemini API (``/v1beta``, and ``/v1/models/…:`` where Google serves it): its
routes, bodies, reader (contents and parts, function declarations, Gemini's schemas),
reply writer (whole, SSE, JSON array), Google's error shape and its credentials
(``x-goog-api-key``, ``?key=``)."""
