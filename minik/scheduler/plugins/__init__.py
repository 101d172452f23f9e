"""The scheduler's plugins, one module each; ``registry`` says which run and with what score weight."""
