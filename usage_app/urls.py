from django.urls import path

from usage_app import views

app_name = "usage"

urlpatterns = [
    path("", views.usage_mine, name="mine"),
    path("all/", views.usage_all, name="all"),
    path("all.csv", views.usage_all_csv, name="all-csv"),
]
