"""The brain level (issue 11): an arena whose marine is steered by a policy network computed by voodoo dolls in the same map."""
