"""``python -m app``: the app (the README's command; :func:`app.launch.main`)."""

from app.launch import main

main()
