"""Running compiled maps in the engine (ViZDoom, headless).

doom.py owns the engine process (start, tics, puke, USER variables, sectors, screenshots);
runner.py drives one map through inferences and compares them with the integer reference,
node by node in debug mode; tiled.py runs tiled WADs in parallel engine processes.
"""
