"""mmssl's tests. A package, so that the shared helpers import as
``tests.support`` (pytest puts the checkout on ``sys.path`` for it)."""
