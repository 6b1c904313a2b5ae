import streamlit as st

st.write("This page is being built.")
