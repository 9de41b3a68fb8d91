"""demos"""
