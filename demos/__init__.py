"""The demo maps: each builds a playable map around a network and knows how to drive it.

museum.py (the walk-through seven-segment digit museum) and mnist.py (a trained integer MLP
on real MNIST digits, tiled and run in parallel engines). `python build.py hello` needs no
module of its own: it is `build.py run` on circuits/hello.dnet.
"""
