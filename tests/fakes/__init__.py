"""FAKE vendor tools for tools that cannot be installed on npufit's build machines (see each folder's README)."""
