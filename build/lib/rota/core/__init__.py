"""The pure core of rota: policies, dispatch planning, jobs, retry decisions, clocks.

Nothing in this package does I/O, imports asyncio, draws random numbers or reads a clock
(except `SystemClock.now`, the single sanctioned wall-clock read, which the rest of the core
never calls: time always arrives as an argument).
"""
