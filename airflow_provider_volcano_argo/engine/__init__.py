"""The async follow machinery that triggers (and blocking mode) run.

List+watch, the shared informer, pod log streams under one reconnect policy, the followed-log limit, and one
follow loop for both followers.

Built on the hooks and the pure ``models``; it never imports operators, sensors or triggers.
"""
