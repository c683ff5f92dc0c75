"""The API's front door: the credential gate in front of Django and the middleware that
puts every failure in the shape of the request's dialect (``inference.dialects.registry``
says which)."""
