"""What the pages share at run time and their calls into the engine, behind Streamlit caches."""
