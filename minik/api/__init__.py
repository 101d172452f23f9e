"""Pure object helpers shared by every layer: errors, metadata, selectors, validation, the resource registry."""
