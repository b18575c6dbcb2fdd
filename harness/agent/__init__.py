"""What an agent's tool calls reach: the tools, the persistent shell and the editor,
the environment they run in, and the processes that must not outlive a run.
"""
