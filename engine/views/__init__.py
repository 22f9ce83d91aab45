"""HTML/figure builders that turn engine traces into views (no streamlit here)."""
