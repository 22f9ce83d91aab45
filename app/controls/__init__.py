"""Widgets that several pages share and that call ``app.runtime`` (a job's follow-up, …); app/ui stays render-only."""
