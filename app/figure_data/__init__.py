"""What the figures show, as plain numpy: no Streamlit, no Plotly, no torch.

Services cache these (``app.services.maps``) and components draw them (``app.components.heatmap``); both
may import this package, which imports neither.
"""
