"""Widgets several pages share that read session state and call ``app.runtime`` (the model picker, layer and
head pickers, examples, the long-work poll component); app/ui stays render-only."""
