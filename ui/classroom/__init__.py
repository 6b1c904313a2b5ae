"""Class sessions: the teacher asks what the model will do, the class answers first, then the reveal.

``store`` is the one interface to the state that every server process shares (the rules live there);
``store_sqlite`` and ``store_postgres`` are its two backends; ``questions`` builds a question from the
live model; ``figures`` draws the reveal; ``ask`` is the widget the pages call; ``view`` the Class page.
"""
